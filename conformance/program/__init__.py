"""Programs: a case turned into the source a user of one framework would write."""
