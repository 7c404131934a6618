"""hosts."""
