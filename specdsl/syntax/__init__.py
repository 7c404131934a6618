"""syntax: spec text -> lark parse tree, with located syntax errors
(`parse_text`); the grammar is grammar/spec.lark. Never raises on bad input.

Imports diag only. model builds its syntax model on top of this.
"""
