"""The Jupyter edge: the magics, the batch magic, the options record and its parser,
the ``%agent`` commands, the click gate and the live-cells comm (docs/architecture.md).

Only this package (and ``ui/``) imports IPython; everything below it runs in a plain
script.
"""
