"""Events -> view state -> MIME bundle, in pure Python (no IPython, no widgets).

``state`` reduces events into the view dict that every front end draws; ``bundle`` turns a run
into its MIME bundle (run JSON, markdown, plain text); ``export`` writes a session as a
notebook. ``agents/`` may import this package; ``ui/`` (the widgets) draws what it computes.
"""
