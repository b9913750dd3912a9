"""The queues' files are what the templates make: a change to a templated object
goes through its template, for every queue at once."""

from __future__ import annotations

import pytest

from relq.scaffold import QUEUES, Queue, render, templates, write
from tests.conftest import REPO


def test_there_are_templates() -> None:
    assert len(templates()) >= 9


@pytest.mark.parametrize("queue", QUEUES, ids=lambda q: q.name)
@pytest.mark.parametrize("template", templates(), ids=lambda t: t.name)
def test_each_queue_file_is_what_its_template_makes(queue: Queue, template) -> None:
    path, text = render(template, queue)
    assert (REPO / path).read_text() == text, f"{path} differs from {template.name}: change the template"


def test_a_new_queue_gets_its_own_names_everywhere() -> None:
    queue = Queue("Invoice", "invoice", "i")
    for template in templates():
        path, text = render(template, queue)
        assert "Invoice" in path
        assert "Notification" not in text and "SyncQueue" not in text and "${" not in text


def test_writing_the_templates_repairs_a_copy_that_drifted(tmp_path) -> None:
    template = templates()[0]
    path, text = render(template, QUEUES[1])
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text(text.replace("BEGIN", "BEGIN -- drifted", 1))
    changed = write(tmp_path)
    assert path in changed
    assert (tmp_path / path).read_text() == text
    assert write(tmp_path) == []  # a second run changes nothing
