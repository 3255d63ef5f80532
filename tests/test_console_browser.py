"""The console page in real headless Chromium (Playwright): the demo repository's pages,
the treemap, a memory's history, an edit saved as the operator, a write by another
process arriving live, a stale save, hostile markup; the layout at 1280 and 390 px, the
Agents and Modules views, the edits each strategy allows, the Review tab and the no-token
page.
Screenshots go to tests/artifacts/ (the older tests) and to each test's temporary folder.

Chromium is Debian's package (``apt-get install -y chromium``); where it is missing,
only these tests skip. ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_by_hand, git

from gitmem import Author, Repository, ops
from gitmem.adapters.console import Console
from gitmem.demo import run_demo
from gitmem.ops import ledgers
from gitmem.ops.ledger import Ledger

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
    """Every memory the store ever held is drawn: live ones as treemap cells, deleted
    ones apart, as hatched tiles below it."""
    open_store(page, "profile/ops")
    ledger = ops.Ledger("profile/ops")
    ledger.follow(demo)
    live = [row for row in ledger.rows() if row["live"]]
    gone = [row for row in ledger.rows() if not row["live"]]
    assert live and gone
    expect(page.locator("#treemap .cell")).to_have_count(len(live))
    expect(page.locator("#deleted .chip.deleted")).to_have_count(len(gone))
    for row in live:
        expect(page.locator(f'#treemap .cell[data-slug="{row["slug"]}"]')).to_have_count(1)
    for row in gone:
        expect(page.locator(f'#deleted .chip[data-slug="{row["slug"]}"]')).to_have_count(1)
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


def test_a_file_in_a_folder_opens_from_the_treemap(
    browser: Browser, demo: Repository, console: str
) -> None:
    """A file store's file at a path with a folder opens its history, not an error."""
    from gitmem.types import FileChange, FileEdit

    change = FileChange((FileEdit("create", "notes/todo.md", "ship the docs\n"),))
    demo.publish_files("files/claude", Author.agent("claude"), lambda _: change)
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(console)
    open_store(page, "files/claude")
    page.locator('#treemap .cell[data-slug="notes/todo.md"]').click()
    expect(page.locator(".memory-head h2")).to_have_text("notes/todo.md")
    expect(page.locator("#history details.revision")).to_have_count(1)
    expect(page.locator("#editor textarea[name=body]")).to_have_value("ship the docs\n")
    expect(page.locator("#banner.error")).to_have_count(0)
    context.close()


def test_the_blame_button_shows_who_wrote_each_line(page: Page) -> None:
    """On a memory's page, the blame button lists each line with its revision and author."""
    open_store(page, "profile/ops")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    page.locator("#blame").get_by_role("button", name="blame").click()
    rows = page.locator("#blame table.blame tbody tr")
    expect(rows.filter(has_text="Pages use ?cursor=")).to_contain_text("r2")
    expect(rows.filter(has_text="Pages use ?cursor=")).to_contain_text("alice")
    shot(page, "blame")


def test_a_deleted_memory_shows_the_text_it_removed(page: Page) -> None:
    """A deleted memory opens read-only history, its deletion carrying the removed text."""
    open_store(page, "profile/ops")
    page.locator('#deleted .chip[data-slug="deploy-runbook"]').click()
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
    # the dialog reaches this process as an event of its own, after the click returns
    with page.expect_event("dialog"):
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


def test_a_commit_dated_past_any_calendar_is_shown_as_its_number(
    page: Page, demo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A teammate's commit may claim a time no calendar date can show (git keeps any
    number of seconds): the Memories panel, the memory's history and the timeline show
    it as the number it is, and draw everything else; text from the store keeps its
    writing direction to itself."""
    far = "99999999999999"
    monkeypatch.setenv("GIT_AUTHOR_DATE", f"@{far} +0000")
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{far} +0000")

    def change(work: Path) -> None:
        (found,) = work.glob("**/api-conventions.md")
        found.write_text(found.read_text() + "\nOne more line.\n")

    commit_by_hand(demo.directory, "profile/ops", tmp_path / "work", change)
    open_store(page, "profile/ops")
    expect(page.locator("#main")).to_contain_text(f"@{far}")
    page.locator('#treemap .cell[data-slug="api-conventions"]').click()
    expect(page.locator("#history")).to_contain_text(f"@{far}")
    page.locator("nav").get_by_role("link", name="Timeline").click()
    expect(page.locator("#timeline")).to_contain_text(f"@{far}")
    expect(page.locator("#timeline .by-git").first).to_have_text(" (git)")
    expect(page.locator("#banner")).to_be_hidden()
    isolated = "(el) => getComputedStyle(el).unicodeBidi"
    assert page.locator("#timeline td").first.evaluate(isolated) == "isolate"


# -- the console's layout, its Agents and Modules views, and the no-token page ----------


def snap(page: Page, where: Path, name: str) -> Path:
    """A full-page screenshot in the test's own temporary folder (never committed)."""
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def overflow(page: Page) -> int:
    """How many pixels the page is wider than the window (0: no sideways scrolling)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def sideways(page: Page) -> list[str]:
    """The ids of tables that scroll sideways inside their box (none: they reflow)."""
    return page.evaluate(
        "[...document.querySelectorAll('.scroll')]"
        ".filter((el) => el.scrollWidth > el.clientWidth + 1)"
        ".map((el) => el.firstElementChild.id || el.firstElementChild.className)"
    )


def box(page: Page, selector: str) -> dict[str, float]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return dict(found)


def test_the_treemap_is_as_wide_as_the_figures_and_labels_its_tiles(
    page: Page, tmp_path: Path
) -> None:
    """At 1280 px the treemap spans the figures above it, each tile names its memory,
    its size and description (in the tooltip, and on the tile where there is room)."""
    open_store(page, "profile/orchestrator")
    figures, tree = box(page, ".figures"), box(page, "#treemap")
    assert abs(figures["width"] - tree["width"]) <= 2, (figures, tree)
    assert abs(figures["x"] - tree["x"]) <= 1
    assert tree["height"] <= 430
    for cell in page.locator("#treemap .cell").all():
        title = cell.get_attribute("title") or ""
        assert cell.get_attribute("data-slug") in title and " chars" in title
    biggest = max(
        page.locator("#treemap .cell").all(), key=lambda c: int(c.get_attribute("data-chars") or 0)
    )
    expect(biggest.locator(".size")).to_contain_text("chars")
    expect(biggest.locator(".description")).to_be_visible()
    assert overflow(page) == 0
    snap(page, tmp_path, "memories-1280")


def test_one_memory_is_a_labelled_band_not_a_wall(page: Page, demo: Repository) -> None:
    """A store of one memory draws a short band with the memory's name and size."""
    ops.create(demo, "one", ADA, "only", "the one memory", "x" * 500)
    page.reload()
    expect(page.locator('#stores tr[data-store="one"]')).to_be_visible()
    open_store(page, "one")
    tree = box(page, "#treemap")
    assert tree["height"] <= 100, tree
    cell = page.locator("#treemap .cell")
    expect(cell).to_have_count(1)
    expect(cell.locator(".slug")).to_have_text("only")
    expect(cell.locator(".size")).to_have_text("500 chars")


def test_the_treemap_keeps_its_layout_when_one_memory_changes(page: Page, demo: Repository) -> None:
    """Tiles stay in slug order, and a small edit to one memory moves no tile more
    than a few pixels (nothing reshuffles)."""
    for n, size in enumerate((900, 120, 2400, 40, 600, 1500, 300)):
        ops.create(demo, "many", ADA, f"m{n}", f"memory {n}", "x" * size)
    page.reload()
    open_store(page, "many")

    def tiles() -> dict[str, dict[str, float]]:
        return {
            c.get_attribute("data-slug") or "": dict(c.bounding_box() or {})
            for c in page.locator("#treemap .cell").all()
        }

    before = tiles()
    assert list(before) == sorted(before)
    ops.edit(demo, "many", ADA, "m3", body="x" * 41)
    expect(page.locator('#treemap .cell[data-slug="m3"]')).to_have_attribute("data-chars", "41")
    after = tiles()
    assert list(after) == list(before)
    for slug, was in before.items():
        now = after[slug]
        assert all(abs(now[k] - was[k]) < 4 for k in ("x", "y", "width", "height")), slug


def test_the_console_fits_a_phone(browser: Browser, console: str, tmp_path: Path) -> None:
    """At 390 px the header and nav wrap within the window, no page scrolls sideways,
    and the treemap still spans the figures."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(console)
    expect(page.locator("#live")).to_have_text("live")
    # read in one go in the page: the tabs are drawn again as the page updates, and a
    # link looked up one at a time may be gone by the time it is measured
    edges = page.evaluate(
        """() => [...document.querySelectorAll('header a, header #live')]
            .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; })"""
    )
    assert len(edges) >= 2
    for left, right in edges:
        assert left >= 0 and right <= 390, edges
    assert overflow(page) == 0
    assert sideways(page) == []
    label = page.locator("#stores tbody td").first.evaluate(
        "(td) => getComputedStyle(td, '::before').content"
    )
    assert label == '"store"'
    snap(page, tmp_path, "stores-390")
    open_store(page, "profile/ops")
    assert overflow(page) == 0
    figures, tree = box(page, ".figures"), box(page, "#treemap")
    assert abs(figures["width"] - tree["width"]) <= 2
    for link in page.locator("header a").all():
        edge = link.bounding_box()
        assert edge is not None and edge["x"] + edge["width"] <= 390, edge
    snap(page, tmp_path, "memories-390")
    for view in ("agents", "modules"):
        page.locator("nav").get_by_role("link", name=view.capitalize()).click()
        expect(page.locator(f"#{view}")).to_be_visible()
        assert overflow(page) == 0, view
        assert sideways(page) == [], view
        snap(page, tmp_path, f"{view}-390")
    page.goto(f"{console}#/store/profile/ops/timeline")
    expect(page.locator("#timeline")).to_be_visible()
    assert (overflow(page), sideways(page)) == (0, [])
    snap(page, tmp_path, "timeline-390")
    context.close()
    assert errors == []


def test_the_agents_view_says_how_each_profile_holds_its_stores(
    page: Page, demo: Repository, tmp_path: Path
) -> None:
    """Each profile once: its scope, whether its instances share one store or take one
    each, and the divergence where that is not what the scope asked for."""
    from conftest import capability

    from gitmem import Agent

    root = demo.bind(capability("markdown", "inherited"), Agent("helper", "h-root"))
    assert root is not None
    assert root.call("create_memory", {"name": "n", "description": "d", "body": "b"}).ok
    page.locator("nav").get_by_role("link", name="Agents").click()
    rows = page.locator("#agents tbody tr")
    expect(rows).to_have_count(5)
    ops_row = page.locator('#agents tr[data-profile="ops"]')
    expect(ops_row).to_contain_text("shared")
    expect(ops_row).to_contain_text("one store")
    expect(ops_row).to_contain_text("as asked")
    expect(ops_row.locator('[data-instance="alice"]')).to_be_visible()
    expect(ops_row.locator('[data-instance="bob"]')).to_be_visible()
    helper = page.locator('#agents tr[data-profile="helper"]')
    expect(helper.locator(".divergence")).to_contain_text("h-root")
    expect(helper.locator(".divergence")).to_contain_text("keeps its own, instance/h-root")
    assert "Ada Operator" not in (page.locator("#agents").text_content() or "")
    assert overflow(page) == 0
    snap(page, tmp_path, "agents-1280")


def test_the_modules_view_lists_each_store_with_every_instance(
    page: Page, demo: Repository, tmp_path: Path
) -> None:
    """Each store once with every instance holding it; a click opens the store."""
    page.locator("nav").get_by_role("link", name="Modules").click()
    rows = page.locator("#modules tbody tr")
    expect(rows).to_have_count(len(demo.stores()))
    ops_row = page.locator('#modules tr[data-store="profile/ops"]')
    expect(ops_row.locator('[data-instance="alice"]')).to_be_visible()
    expect(ops_row.locator('.pill.holder[data-instance="bob"]')).to_be_visible()
    expect(ops_row).to_contain_text("shared")
    orchestrator = page.locator('#modules tr[data-store="profile/orchestrator"]')
    expect(orchestrator.locator(".pill")).to_have_count(2)
    snap(page, tmp_path, "modules-1280")
    ops_row.get_by_role("link", name="profile/ops").click()
    expect(page.locator("#treemap")).to_be_visible()


def test_a_notebook_offers_no_edits_and_a_curated_store_only_delete(page: Page) -> None:
    """The page offers what the store's strategy allows, and says why not the rest."""
    open_store(page, "instance/digest-mon")
    expect(page.locator("#new-memory")).to_have_count(0)
    expect(page.locator("#no-create")).to_contain_text("gitmem notebook save")
    page.locator("#treemap .cell").first.click()
    expect(page.locator(".memory-head")).to_be_visible()
    expect(page.locator("#save")).to_have_count(0)
    expect(page.locator("#delete")).to_have_count(0)
    expect(page.locator("#editor textarea")).to_have_attribute("readonly", "")
    expect(page.locator("#editor .refused").first).to_contain_text("gitmem notebook save")
    page.locator("nav").get_by_role("link", name="Stores").click()
    open_store(page, "profile/orchestrator")
    expect(page.locator("#new-memory")).to_have_count(0)
    page.locator("#treemap .cell").first.click()
    expect(page.locator("#delete")).to_be_visible()
    expect(page.locator("#save")).to_have_count(0)
    expect(page.locator("#editor .refused")).to_contain_text("append-only")


def test_a_visit_without_the_token_shows_how_to_get_in(
    browser: Browser, console: str, tmp_path: Path
) -> None:
    """Opening the console's address without its token shows a page that says to open
    the address `gitmem console` printed, not raw JSON; the token a page was given is
    kept in its own origin's storage (no cookie, which every port of the host would
    get), so a reload keeps the page; a token of an earlier launch gets the same
    page that says how to get in."""
    context = browser.new_context(viewport={"width": 1280, "height": 600})
    page = context.new_page()
    page.goto(console.split("?")[0])
    expect(page.locator("#door h2")).to_have_text("How to get in")
    expect(page.locator("#door")).to_contain_text("gitmem console")
    expect(page.locator("#door")).to_contain_text("?token=")
    snap(page, tmp_path, "no-token")
    page.goto(console)
    expect(page.locator("#live")).to_have_text("live")
    assert "token" not in page.url
    assert context.cookies() == []
    page.reload()
    expect(page.locator("#stores")).to_be_visible()
    page.evaluate("localStorage.setItem('gitmem-console-token', 'of-an-earlier-launch')")
    page.reload()
    expect(page.locator("#door h2")).to_have_text("How to get in")
    context.close()


def test_the_review_tab_approves_and_rejects(page: Page, demo: Repository) -> None:
    """A reviewed agent's proposal shows in the Review tab with its diffs; Approve takes
    one memory into the store as the operator's merge, Reject puts back the rest."""
    from dataclasses import replace

    from gitmem import Agent, Capability

    base = Capability.from_dict(
        {
            "implementation": "markdown",
            "params": {"scope": "shared", "maxCount": 0, "maxLenPerMemory": 0,
                       "maxTotalLen": 0, "maxLenIndex": 0, "maxLenDescription": 0,
                       "maxResults": 25},
        }
    )  # fmt: skip
    holder = demo.bind(replace(base, review=True), Agent("ops", "carol"))
    assert holder is not None
    for slug, body in (("release-notes", "ship on tuesdays\n"), ("scratch", "tmp\n")):
        done = holder.call("create_memory", {"name": slug, "description": slug, "body": body})
        assert done.ok, done.text
    page.locator("#tabs").get_by_role("link", name="Review", exact=True).click()
    card = page.locator('section.proposal[data-proposal="profile/ops/carol"]')
    expect(card).to_contain_text("carol → profile/ops")
    expect(card.locator('.proposed[data-slug="release-notes"] pre.diff')).to_contain_text(
        "+ship on tuesdays"
    )
    shot(page, "review")
    card.locator('.proposed[data-slug="release-notes"] button.approve').click()
    expect(page.locator("#banner")).to_contain_text("Approved release-notes of profile/ops/carol")
    assert ops.show(demo, "profile/ops", "release-notes").body == "ship on tuesdays\n"
    log = git(demo.directory, "log", "-1", "--format=%an|%P", "profile/ops").stdout
    assert log.startswith("Ada Operator|") and len(log.split("|")[1].split()) == 2
    # the approval moved the proposal on (what stays pending is carried onto the store's
    # new head): a decision names the head the page shows, so it waits for the redraw
    expect(card.locator('.proposed[data-slug="release-notes"]')).to_have_count(0)
    card.locator("p button.reject").click()
    expect(page.locator("#no-proposals")).to_be_visible()
    assert demo.review() == []


def test_the_memories_panel_shows_its_rows_before_the_history(
    browser: Browser, demo: Repository, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With the history still being read (a fresh clone of a long one), the Stores page
    lists the stores at once, its history's figures marked as being read, and the
    Memories panel draws the live memories at once, marks the history's columns as
    being read with how far it is, and fills them in, deleted memories too, once the
    history is read."""
    opened = threading.Event()
    real = Ledger.follow

    def follow(self: ops.Ledger, repo: Repository, progress: Any = None) -> None:
        if threading.current_thread().name.startswith("gitmem-ledger"):
            assert opened.wait(60)
        real(self, repo, progress)

    monkeypatch.setattr(Ledger, "follow", follow)
    monkeypatch.setattr(ledgers.Ledgers, "patience", None)
    shutil.rmtree(Path(demo.directory) / "gitmem" / "ledger", ignore_errors=True)
    live = [slug for slug, _ in demo.summaries("profile/ops")]
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        with Console(demo, token=Console.new_token(), port=0, author=ADA).running() as url:
            page = context.new_page()
            page.goto(url)
            row = page.locator('#stores tr[data-store="profile/ops"]')
            expect(row.locator(".pending")).to_have_count(3)
            expect(row).to_contain_text("markdown")
            row.get_by_role("link", name="profile/ops", exact=True).click()
            expect(page.locator("#history.reading")).to_contain_text("Reading history…")
            expect(page.locator("#treemap .cell")).to_have_count(len(live))
            for slug in live:
                expect(page.locator(f'#treemap .cell[data-slug="{slug}"]')).to_have_count(1)
            expect(page.locator("#deleted")).to_have_count(0)
            page.locator("details.listing summary").click()
            pending = page.locator("details.listing tbody tr").first.locator(".pending")
            expect(pending).to_have_count(4)
            expect(pending.first).to_have_text("reading history…")
            snap(page, tmp_path, "memories-reading")
            opened.set()
            expect(page.locator("#history")).to_have_count(0)
            expect(page.locator("details.listing .pending")).to_have_count(0)
            gone = [row for row in ledger_rows(demo) if not row["live"]]
            assert gone
            expect(page.locator("#deleted .chip.deleted")).to_have_count(len(gone))
            page.locator("#tabs").get_by_role("link", name="Stores").click()
            expect(row.locator(".pending")).to_have_count(0)
            expect(row).to_contain_text("shared")
    finally:
        opened.set()
        context.close()


def ledger_rows(repo: Repository) -> list[dict[str, Any]]:
    ledger = ops.Ledger("profile/ops")
    ledger.follow(repo)
    return ledger.rows()
