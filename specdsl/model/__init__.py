"""model: the data model of the language. The syntax model (`ast`, built
from the parse tree by `build`, printed back by `printer`), evaluated
values (`values`), the resolved configuration (`config`) and the metric
names (`metrics`). Pure values and functions, no I/O.

Imports syntax and diag only; never resolve, validate, graph, plan, state,
apply, cli or the I/O side. Every layer above reads it.
"""
