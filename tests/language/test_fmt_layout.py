"""Layout details the formatter keeps."""

from specdsl.model.build import parse
from specdsl.model.printer import format_file

TEXT = '''# header of the file
#
# more header

# the variable's own comment
variable "a" { default = 1 }

stack "s" {
  # first group

  # second group
  python = "3.11"
}
'''


def test_blank_lines_between_comment_groups_are_kept():
    file, diags = parse(TEXT, "t.spec")
    assert not diags
    assert format_file(file) == TEXT
    again, _ = parse(format_file(file), "t.spec")
    assert format_file(again) == TEXT
