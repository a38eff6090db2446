"""The term: its settings (term.toml and the command line), due dates, extensions and the late policy."""
