"""Canvas and Moodle: their downloads, rosters and import formats, read and written as those systems do."""
