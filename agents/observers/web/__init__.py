"""The web view (``teamtree web``): a live team page for operators and a page per
person in the team, served by starlette + uvicorn over websockets."""

from teamtree.agents.observers.web.drawn_tree import DrawnTree
from teamtree.agents.observers.web.expectations import KittingExpectations
from teamtree.agents.observers.web.missions import DeskError, MissionDesk
from teamtree.agents.observers.web.page_sockets import PageSockets
from teamtree.agents.observers.web.person import HumanSessions, WebHuman
from teamtree.agents.observers.web.plans import TeamPlans
from teamtree.agents.observers.web.server import STATIC, WebServer
from teamtree.agents.observers.web.sign_ins import SignIns
from teamtree.agents.observers.web.state import MAX_ALERTS, MAX_MISSIONS, MAX_SPANS, WebState

__all__ = [
    "MAX_ALERTS",
    "MAX_MISSIONS",
    "MAX_SPANS",
    "STATIC",
    "DeskError",
    "DrawnTree",
    "HumanSessions",
    "KittingExpectations",
    "MissionDesk",
    "PageSockets",
    "SignIns",
    "TeamPlans",
    "WebHuman",
    "WebServer",
    "WebState",
]
