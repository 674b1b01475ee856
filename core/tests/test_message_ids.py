"""Message ids stay unique where a shared pseudo-random sequence would repeat them."""

from __future__ import annotations

import os
import random

import pytest

from tether.messages import Message, new_id


def test_ids_are_unique_and_opaque_hex() -> None:
    ids = [new_id() for _ in range(10_000)] + [Message.user("hi").id for _ in range(100)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_seeding_the_random_module_does_not_repeat_ids() -> None:
    random.seed(1234)
    first = [new_id() for _ in range(3)]
    random.seed(1234)
    assert not set(first) & {new_id() for _ in range(3)}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_worker_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then exit without running pytest's teardown
        os.write(write, "".join(new_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    parent = [new_id() for _ in range(3)]
    assert len(child) == 96 and not {child[i : i + 32] for i in (0, 32, 64)} & set(parent)
