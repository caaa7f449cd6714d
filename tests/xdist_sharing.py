"""How pytest-xdist shares a run among its workers (a plugin of the root conftest).

* Tests of one module marked ``shares_setup`` whose ``backend``, ``world_size`` and ``api`` parameters are equal
  share a setup (a world cached by ``tests/worlds.py``, a module fixture), so they form one group and run on one
  worker: the setup is paid once per run, not once per worker that happens to get one of its tests.
* Tests marked ``long`` are handed out first, so none of them starts late and ends the run alone. A worker runs a
  test only once it holds the next one (pytest-xdist's workers need it for fixture teardown), so a worker given a
  long test is also given one more unit that waits behind it: the smallest one left, not a whole setup group.

A worker that dies (a crash in a test, or a test past its time limit: ``tests/time_limit.py``) fails the test it
was running, which is not run again, and is replaced; its unfinished tests go to the workers.

Groups are handed to the parent's scheduler through a file (the first worker writes the map of test id to group once
it has collected), not by renaming test ids, which newer pytest versions no longer allow. Without pytest-xdist, or
with a ``--dist`` mode other than its default ``load``, only the ordering applies.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

SETUP_PARAMS = ("backend", "world_size", "api")
_GROUPS_FILE = pytest.StashKey[Path]()
_WORKER_KEY = "iris_setup_groups"  # workerinput: where the first worker writes the groups


def setup_group(item: pytest.Item) -> str | None:
    """The group of a ``shares_setup`` test: its module and the parameters that pick its setup (None: no group)."""
    if item.get_closest_marker("shares_setup") is None:
        return None
    params = getattr(getattr(item, "callspec", None), "params", {})
    return ":".join([item.module.__name__] + [f"{key}={params.get(key, '-')}" for key in SETUP_PARAMS])


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "dist", "no") == "load" and not hasattr(config, "workerinput"):
        config.option.loadscopereorder = False  # hand groups out in collection order: long tests first
        config.stash[_GROUPS_FILE] = Path(tempfile.mkdtemp(prefix="iris-xdist-")) / "groups.json"


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_GROUPS_FILE, None)
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    path = node.config.stash.get(_GROUPS_FILE, None)
    if path is not None:
        node.workerinput[_WORKER_KEY] = str(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    path = config.stash.get(_GROUPS_FILE, None)
    return None if path is None else _setup_group_scheduling(config, log, path)


def _is_long(item: pytest.Item) -> bool:
    return item.get_closest_marker("long") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not _is_long(item))  # stable: otherwise collection order
    workerinput = getattr(config, "workerinput", {})
    if _WORKER_KEY in workerinput and workerinput["workerid"] == "gw0":  # every worker collects the same tests
        groups = {item.nodeid: group for item in items if (group := setup_group(item)) is not None}
        long = [item.nodeid for item in items if _is_long(item)]
        path = Path(workerinput[_WORKER_KEY])
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({"groups": groups, "long": long}))
        os.replace(partial, path)  # the parent never reads half a file


def _setup_group_scheduling(config: pytest.Config, log, path: Path):
    """pytest-xdist's scope scheduling with a test's group as its scope (a test without one is its own scope)."""
    from xdist.scheduler import LoadScopeScheduling

    class SetupGroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] = {}
        long: frozenset[str] = frozenset()

        def schedule(self) -> None:
            if self.collection is None and path.exists():  # every worker has collected: the file is complete
                written = json.loads(path.read_text())
                self.groups, self.long = written["groups"], frozenset(written["long"])
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return self.groups.get(nodeid, nodeid)

        def remove_node(self, node) -> str | None:
            """A dead worker's test (the first it had not finished) fails as crashed and is not run again, as under
            ``--dist load`` (run again, a test that hangs would end a worker at every turn); its other unfinished
            tests go back in the queue. pytest-xdist's scope scheduling puts the whole workload back, the units it
            finished too: handed out, such a unit gave a worker no tests, and that worker (which runs a test only
            once it holds the next) waited for ever."""
            workload = self.assigned_work.get(node, {})
            scope, crashed = next(((scope, nodeid) for scope, unit in workload.items()
                                   for nodeid, done in unit.items() if not done), (None, None))
            if crashed is not None:
                workload[scope][crashed] = True
            for scope in [scope for scope, unit in workload.items() if all(unit.values())]:
                del workload[scope]
            super().remove_node(node)
            return crashed

        def _assign_work_unit(self, node) -> None:
            """The next unit in order, or the smallest one left where it would wait behind a long test."""
            pending = (nodeid for unit in self.assigned_work.get(node, {}).values()
                       for nodeid, done in unit.items() if not done)
            if any(nodeid in self.long for nodeid in pending):
                smallest = min(reversed(self.workqueue), key=lambda scope: len(self.workqueue[scope]))
                self.workqueue.move_to_end(smallest, last=False)
            super()._assign_work_unit(node)

    return SetupGroupScheduling(config, log)
