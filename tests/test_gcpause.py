"""The collector pause around bulk loads never leaves the collector off, whatever the nesting."""
import gc
import threading

from wikimem.stores.gcpause import paused_gc


def test_nested_and_concurrent_pauses_restore_the_collector():
    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        with paused_gc():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other_thread)
    with paused_gc():
        t.start()
        assert inside.wait(5)
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner exit did not turn it on early
    assert not gc.isenabled()  # the other thread is still loading
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_a_process_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_only_a_one_shot_process_freezes_what_it_loaded(monkeypatch):
    from wikimem.stores import gcpause

    class Cycle:
        pass

    gc.collect()
    gc.unfreeze()
    with paused_gc():
        a = Cycle()
        a.me = a
    assert gc.get_freeze_count() == 0  # a long-running process: cycles stay collectable
    monkeypatch.setattr(gcpause, "FREEZE_AFTER_LOAD", True)
    with paused_gc():
        pass
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
