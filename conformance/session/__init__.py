"""The parts of a conformance run that the pytest hooks (``conformance/plugin.py``) call, one module per
stage: state.py (options and the stash keys the stages share), start.py (outputs, what a resumed run
keeps), items.py (collection and items), finish.py (the end of a run).  None imports the hooks."""
