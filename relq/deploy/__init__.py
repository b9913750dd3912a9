"""invoke deploy: applies the build's plan to a SQL Server, keeping a journal."""
