"""A start-up message's entry and what it means (split from ``start_up_messages`` in s30, so each runtime's table
may live in its own module): ``Means``, what a start-up line says of its wait; ``DECISIVE``, the meanings that
decide an init stall by themselves; ``Message``, one entry; ``ADDR``, a host and port as the runtimes print them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Means(Enum):
    """What a start-up line says of its wait."""
    WAITING = "is waiting for"  # a wait begun: decides nothing alone
    #: a wait begun, said by a program of the job rather than a runtime (UNDECIDED does not name it; it
    #: decides only where it ends the log: rules_init.start_up_ends_the_log)
    JOINING = "is about to wait for"
    RETRYING = "kept retrying a refused connect to"  # time passed: the peer's socket was not listening
    #: (s30) a connect retried after a backoff whatever its error (the line says it: refused, no route, timed out)
    RETRIED = "kept retrying its connect to"
    TIMED_OUT = "waited past its limit for"
    GAVE_UP = "gave up on"
    NO_INTERFACE = "found no network interface for"
    FOREIGN_PEER = "had a foreign process connect where it waits for"
    UNREACHABLE = "got no answer from"  # packets dropped (ETIMEDOUT, no route): the network path, not a wait
    UNRESOLVED = "could not resolve the name of"  # getaddrinfo failed: retried until the connect deadline
    #: a stack dump (gdb's, a native backtrace) that caught the process inside its start-up's wait: the process
    #: was stopped there when someone looked, the way a hang is dumped
    CAUGHT_IN = "was caught by a stack dump inside"
    #: (s31) a runtime's own word that its start-up's wait ended: the process group formed (every rank joined), so a
    #: connect retried or a wait said before it in its file was start-up under way, never a stall
    RETURNED = "returned from its wait for"


#: (no interface is not among them: a host without the interface NCCL_SOCKET_IFNAME names is a transport set-up
#: failure in the recorded real-NCCL run, samples/gpu_2x1_badiface, and the wild labels of that line disagree)
DECISIVE = frozenset({Means.RETRYING, Means.RETRIED, Means.TIMED_OUT, Means.GAVE_UP, Means.FOREIGN_PEER,
                      Means.UNRESOLVED, Means.CAUGHT_IN})


@dataclass(frozen=True)
class Message:
    name: str
    runtime: str
    pattern: str
    means: Means
    awaited: str  # what start-up waited for, said after ``means`` (the verdict names it)
    source: str  # where the runtime writes it: repo path:line (commit in the module's docstring)
    decoded: bool = True  # False: no other parser makes an event of it; parsers/start_up makes a `stall`


ADDR = r"(?P<address>\[?[\w.:\-]+\]?[:<]\d+>?)"
