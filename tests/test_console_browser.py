"""The console page in real headless Chromium (Playwright): the demo repository's pages,
the treemap, a memory's history, an edit saved as the operator, a write by another
process arriving live, a stale save, hostile markup. Screenshots go to tests/artifacts/.

Chromium is Debian's package (``apt-get install -y chromium``); where it is missing,
only these tests skip. ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git

from gitmem import Author, Repository, ops
from gitmem.adapters.console import Console
from gitmem.demo import run_demo

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(
        f"no Chromium at {CHROMIUM}; install it with `apt-get update && apt-get install -y "
        "chromium` to run the console's browser tests",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
GITMEM = Path(sys.executable).parent / "gitmem"
ADA = Author("Ada Operator", "ada@example.org")
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
HOSTILE_SHORT = '<img src=x onerror="window.__pwned=3">'
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's repository, made once per worker and copied for each test."""
    path = tmp_path_factory.mktemp("demo") / "demo.git"
    run_demo(str(path), lambda _: None)
    return path


@pytest.fixture
def demo(demo_template: Path, tmp_path: Path) -> Iterator[Repository]:
    """A fresh copy of the demo repository."""
    path = tmp_path / "demo.git"
    shutil.copytree(demo_template, path)
    repo = Repository.open(str(path))
    yield repo
    repo.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium, no network chatter; Playwright gives each launch a fresh
    temporary profile (its user-data-dir) of its own."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def console(demo: Repository) -> Iterator[str]:
    """The console on the demo copy, serving; yields the URL it prints."""
    with Console(demo, token=Console.new_token(), port=0, author=ADA).running() as url:
        yield url


@pytest.fixture
def page(browser: Browser, console: str) -> Iterator[Page]:
    """A page that has opened the printed URL; a dialog or a script error fails the test
    unless the test says otherwise."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.goto(console)
    expect(opened.locator("#live")).to_have_text("live")
    yield opened
    context.close()
    assert errors == []


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def open_store(page: Page, store: str) -> None:
    page.locator("#stores").get_by_role("link", name=store, exact=True).click()
    expect(page.locator("#treemap")).to_be_visible()


def test_the_stores_page_lists_each_store_with_its_instances(page: Page, demo: Repository) -> None:
    """Each store once, strategy and limits, who holds it, shared or one instance's."""
    rows = page.locator("#stores tbody tr")
    expect(rows).to_have_count(len(demo.stores()))
    ops_row = page.locator('#stores tr[data-store="profile/ops"]')
    expect(ops_row).to_contain_text("markdown")
    expect(ops_row).to_contain_text("maxLenPerMemory=2,000")
    expect(ops_row).to_contain_text("alice")
    expect(ops_row).to_contain_text("bob")
    expect(ops_row).to_contain_text("shared")
    expect(page.locator('#stores tr[data-store="instance/carol"]')).to_contain_text("one instance")
    assert "token=" not in page.url
    shot(page, "stores")


def test_the_treemap_has_one_cell_per_memory_ever_held(page: Page, demo: Repository) -> None:
    """Every memory the store ever held is a cell, deleted ones drawn distinctly."""
    open_store(page, "profile/ops")
    ledger = ops.Ledger("profile/ops")
    ledger.follow(demo)
    cells = page.locator("#treemap .cell")
    expect(cells).to_have_count(len(ledger.rows()))
    for row in ledger.rows():
        cell = page.locator(f'#treemap .cell[data-slug="{row["slug"]}"]')
        expect(cell).to_have_class("cell" if row["live"] else "cell deleted")
    expect(page.locator('[data-figure="count"] .big')).to_have_text("1")
    expect(page.locator('[data-figure="count"]')).to_contain_text("peak 2")
    shot(page, "memories")


def test_clicking_a_cell_opens_its_history(page: Page) -> None:
    """A cell opens the memory: its revisions newest first, with diff and whole text."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    revisions = page.locator("#history details.revision")
    expect(revisions).to_have_count(2)
    expect(revisions.nth(0)).to_contain_text("r2 edit by alice")
    revisions.nth(0).locator("summary").click()
    expect(revisions.nth(0).locator("pre.diff")).to_contain_text("+Pages use ?cursor=")
    revisions.nth(0).get_by_role("button", name="whole text").click()
    expect(revisions.nth(0).locator("pre.text")).to_contain_text("Pages use ?cursor=")
    shot(page, "memory")


def test_a_deleted_memory_shows_the_text_it_removed(page: Page) -> None:
    """A deleted memory opens read-only history, its deletion carrying the removed text."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="deploy-runbook"]').click()
    expect(page.locator(".memory-head")).to_contain_text("deleted at revision 2")
    first = page.locator("#history details.revision").first
    first.locator("summary").click()
    expect(first.locator("pre.diff")).to_contain_text("-1. drain the canary")


def test_code_halves_show_as_code(page: Page) -> None:
    """carol's code memory shows its code and onUse halves as code."""
    page.locator("#stores").get_by_role("link", name="instance/carol").click()
    page.locator('#treemap .cell[data-slug="csv-tools"]').click()
    expect(page.locator("#editor pre.code").first).to_contain_text("export function parseCsv")
    expect(page.locator("#editor pre.code").nth(1)).to_contain_text("views.openText")


def test_the_timeline_filters_by_author_and_opens_a_version(page: Page, demo: Repository) -> None:
    """Every version newest first; the author filter keeps one author's; a row opens it."""
    ops.edit(demo, "profile/ops", ADA, "api-conventions", description="set by the operator")
    open_store(page, "profile/ops")
    page.locator("nav").get_by_role("link", name="Timeline").click()
    rows = page.locator("#timeline tbody tr")
    expect(rows).to_have_count(5)
    expect(rows.first).to_contain_text("Ada Operator")
    page.locator("#author").select_option("alice")
    expect(rows).to_have_count(4)
    shot(page, "timeline")
    rows.nth(1).get_by_role("link").click()
    expect(page.locator('#history details.revision[data-revision="2"]')).to_have_attribute(
        "open", ""
    )


def test_a_live_update_keeps_the_open_revision(page: Page, demo: Repository) -> None:
    """Writes elsewhere and to the open memory arrive live without closing or redrawing
    the revision the operator is reading: the same nodes stay, the new revision is added."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    reading = page.locator('#history details.revision[data-revision="2"]')
    reading.locator("summary").click()
    reading.get_by_role("button", name="whole text").click()
    expect(reading.locator("pre.text")).to_contain_text("Pages use ?cursor=")
    reading.get_by_role("button", name="whole text").evaluate("button => { button.mine = 1; }")
    ops.create(demo, "instance/carol", Author.agent("carol"), "elsewhere", "another store", "x\n")
    ops.edit(demo, "profile/ops", Author.agent("alice"), "api-conventions", description="later")
    expect(page.locator("#history details.revision")).to_have_count(3)
    expect(page.locator(".memory-head")).to_contain_text("live · revision 3")
    expect(reading).to_have_attribute("open", "")
    expect(reading.locator("pre.text")).to_contain_text("Pages use ?cursor=")
    assert reading.get_by_role("button", name="whole text").evaluate("button => button.mine") == 1


def test_an_edit_saved_in_the_page_is_an_operator_commit(page: Page, demo: Repository) -> None:
    """Save writes one commit authored as the operator, through the CLI's write path."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    body = page.locator("#editor textarea")
    body.fill("Errors are {error: {kind, message}}.\n")
    page.locator("#save").click()
    expect(page.locator("#banner")).to_contain_text("saved api-conventions as revision 3")
    expect(page.locator(".memory-head")).to_contain_text("live · revision 3")
    log = git(demo.directory, "log", "-1", "--format=%an <%ae>|%s", "profile/ops").stdout
    assert log == "Ada Operator <ada@example.org>|edit api-conventions\n"
    assert ops.show(demo, "profile/ops", "api-conventions").body.startswith(
        "Errors are {error: {kind"
    )
    shot(page, "memory-saved")


def test_a_refused_save_shows_the_refusal(page: Page) -> None:
    """A save over the store's recorded limit shows the CLI's refusal and writes nothing."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    page.locator('#editor input[name="description"]').fill("x" * 61)
    page.locator("#save").click()
    expect(page.locator("#banner")).to_contain_text("(limit-exceeded)")
    expect(page.locator("#banner")).to_contain_text("maxLenDescription")


def test_a_write_by_another_process_appears_without_a_reload(page: Page, demo: Repository) -> None:
    """A memory created by the gitmem command shows up in the open treemap."""
    open_store(page, "profile/ops")
    page.evaluate("window.__same_page = true")
    made = subprocess.run(
        [
            str(GITMEM),
            "--repo",
            demo.directory,
            "create",
            "--store",
            "profile/ops",
            "fresh",
            "-d",
            "from elsewhere",
            "--body",
            "arrived live\n",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    expect(page.locator('#treemap .cell[data-slug="fresh"]')).to_be_visible()
    assert page.evaluate("window.__same_page") is True


def test_a_stale_save_shows_the_newer_text(page: Page, demo: Repository) -> None:
    """A save whose base moved is refused, and the newer text is shown beside my edits."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    page.locator("#editor textarea").fill("my version\n")
    ops.edit(demo, "profile/ops", Author.agent("alice"), "api-conventions", body="theirs\n")
    expect(page.locator("#banner")).to_contain_text("changed to revision 3 while you were editing")
    page.locator("#save").click()
    expect(page.locator("#banner")).to_contain_text("is at revision 3, not 2")
    expect(page.locator("#editor .newer pre.text")).to_have_text("theirs\n")
    expect(page.locator("#editor textarea")).to_have_value("my version\n")
    shot(page, "memory-stale")
    assert ops.show(demo, "profile/ops", "api-conventions").body == "theirs\n"
    page.get_by_role("button", name="Keep my edits over it").click()
    page.locator("#save").click()
    expect(page.locator(".memory-head")).to_contain_text("live · revision 4")
    assert ops.show(demo, "profile/ops", "api-conventions").body == "my version\n"


def test_leaving_with_unsaved_edits_asks_first(page: Page) -> None:
    """Navigating away from a changed editor asks; dismissing keeps the edits."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    page.locator("#editor textarea").fill("unsaved\n")
    asked: list[str] = []

    def answer(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", answer)
    page.locator("nav").get_by_role("link", name="Memories").click()
    expect(page.locator("#editor textarea")).to_have_value("unsaved\n")
    assert asked == ["You have unsaved edits. Leave and discard them?"]


def test_create_and_delete_from_the_page(page: Page, demo: Repository) -> None:
    """A new memory made in the page is a create by the operator; Delete removes it."""
    open_store(page, "profile/ops")
    form = page.locator("#new-memory")
    form.locator('input[name="slug"]').fill("made-here")
    form.locator('input[name="description"]').fill("from the console")
    form.locator("textarea").fill("hello\n")
    form.get_by_role("button", name="Create").click()
    expect(page.locator(".memory-head")).to_contain_text("live · revision 1")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#delete").click()
    expect(page.locator(".memory-head")).to_contain_text("deleted at revision 2")
    log = git(demo.directory, "log", "-2", "--format=%an|%s", "profile/ops").stdout
    assert log == "Ada Operator|delete made-here\nAda Operator|create made-here\n"


def test_a_hostile_memory_does_not_execute(page: Page, demo: Repository) -> None:
    """Markup in a slug's description and body shows as text; no script runs."""
    ops.create(demo, "profile/ops", Author.agent("mallory"), "xss", HOSTILE_SHORT, HOSTILE)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="xss"]').click()
    expect(page.locator('#editor input[name="description"]')).to_have_value(HOSTILE_SHORT)
    expect(page.locator("#editor textarea")).to_have_value(HOSTILE)
    first = page.locator("#history details.revision").first
    first.locator("summary").click()
    first.get_by_role("button", name="whole text").click()
    expect(first.locator("pre.text")).to_have_text(HOSTILE)
    expect(first.locator(".shown")).not_to_contain_text("null")
    shot(page, "hostile")
    page.locator("nav").get_by_role("link", name="Timeline").click()
    expect(page.locator("#timeline")).to_contain_text("mallory")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 1  # the page's own
    assert page.locator("#main img").count() == 0
    assert dialogs == []
