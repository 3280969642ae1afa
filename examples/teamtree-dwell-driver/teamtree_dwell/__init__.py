"""An example teamtree plugin: the ``dwell_driver`` agent kind (see ``driver``)."""

from teamtree_dwell.driver import DwellDriverAgent

__all__ = ["DwellDriverAgent"]
