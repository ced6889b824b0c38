"""shown_url masks a password and leaves everything else as written."""

from skillstate.support.urls import shown_url


def test_a_password_is_masked_and_the_rest_kept() -> None:
    assert shown_url("postgresql://app:hunter2@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert shown_url("redis://:secret@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert shown_url("postgresql://app@db/x") == "postgresql://app@db/x"
    assert shown_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert shown_url("not a url@all") == "not a url@all"
