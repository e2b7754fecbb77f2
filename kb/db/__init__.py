"""The SQLite database `kb build` writes for Datasette: its schema (the one owner of tables and columns), the rows,
the readers, and the safe writing of it. Only this package writes SQL against the tables' columns."""
