"""Workers: one long-lived process per framework, and the parent's view of them."""
