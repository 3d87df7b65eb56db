"""The fleet page in a real browser: Debian's Chromium, driven by Playwright, against the
stack `make demo KEEP=1` leaves running (real uploads, worker, index and receiver).

Chromium comes from Debian's packages (`tools/services.sh chromium`, run by `make
services`); Playwright's own browser download is never used. Without /usr/bin/chromium
these tests fail and say how to install it: a skipped browser test would pass for a
checked page. Screenshots land in var/ui-screenshots/ to be looked at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.kept_demo import KeptDemo

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = ROOT / "var" / "ui-screenshots"
# What the project's headless Chromium runs with: as root it needs --no-sandbox, and the
# machine's closed network refuses the connections Chromium makes in the background.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def stack(kept_demo: KeptDemo) -> tuple[str, str]:
    """(the fleet page's URL, its token) on the suite's kept demo stack."""
    found = re.search(r"Fleet page: (http://\S+/ui) .*token (\S+)\)", kept_demo.stdout)
    assert found, kept_demo.stdout
    assert kept_demo.env["TFCOMPAT_UI_TOKEN"] == found.group(2)
    return found.group(1), found.group(2)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.is_file(), (
        f"{CHROMIUM} is missing: run `tools/services.sh chromium` (or `make services`), "
        "which installs Debian's chromium"
    )
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def signed_in(browser: Browser, stack: tuple[str, str], scripts: bool = True) -> Page:
    url, token = stack
    page = browser.new_context(
        viewport={"width": 1400, "height": 900}, java_script_enabled=scripts
    ).new_page()
    page.goto(url)
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui$"))
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(url)
    return page


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_the_matrix_filtered_to_one_consumer_s_failing_cells(
    browser: Browser, stack: tuple[str, str]
) -> None:
    page = signed_in(browser, stack)
    expect(page.get_by_role("heading", name="Fleet matrix")).to_be_visible()
    shot(page, "matrix")
    legacy = page.get_by_label("legacy-edge: fails", exact=False)
    expect(legacy.first).to_be_visible()
    page.locator("select[name=consumer]").select_option("legacy-edge")  # submits itself (script)
    expect(page).to_have_url(re.compile(r"consumer=legacy-edge"))
    page.locator("select[name=cell]").select_option("fails")
    expect(page).to_have_url(re.compile(r"consumer=legacy-edge.*cell=fails"))
    rows = page.locator("table.matrix tbody tr")
    expect(rows.first).to_be_visible()
    count = rows.count()
    assert count >= 7
    for i in range(count):  # every row shown fails in legacy-edge, and says so in words
        expect(rows.nth(i).locator("td").nth(5)).to_have_text("✗ fails")
    expect(rows.filter(has_text="training/ckpt")).to_have_count(0)
    shot(page, "matrix-legacy-edge-fails")


def test_filtering_works_with_scripts_off(browser: Browser, stack: tuple[str, str]) -> None:
    page = signed_in(browser, stack, scripts=False)
    page.locator("select[name=status]").select_option("compatible")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"status=compatible"))
    statuses = page.locator("table.matrix tbody tr td:nth-of-type(2)")
    assert statuses.count() >= 1
    for text in statuses.all_inner_texts():
        assert text.strip() == "✓ compatible"


def test_a_model_s_page_from_the_matrix(browser: Browser, stack: tuple[str, str]) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("link", name="models/vision/7/saved_model.pb").click()
    expect(page.get_by_role("heading", name="s3://models/vision/7/saved_model.pb")).to_be_visible()
    expect(page.get_by_text("Op type not registered 'DecodeWebP'").first).to_be_visible()
    expect(page.get_by_text("Fix: Upgrade serving-prod to TensorFlow >= 2.20.0")).to_be_visible()
    expect(page.get_by_label("TensorFlow 2.21.0 with saved-model-v1: serves")).to_be_visible()
    expect(page.get_by_label("TensorFlow 2.19.1 with saved-model-v1: fails")).to_be_visible()
    expect(page.locator("table.versions")).to_contain_text("(current)")
    shot(page, "model")


def test_a_consumer_s_page_counts_what_it_cannot_serve_by_cause(
    browser: Browser, stack: tuple[str, str]
) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("link", name="legacy-edge", exact=True).click()
    expect(page.locator("#failing-count")).to_contain_text("legacy-edge cannot serve")
    expect(page.get_by_role("rowheader", name="attr")).to_be_visible()
    shot(page, "consumer")


def test_a_fleet_change_previewed(browser: Browser, stack: tuple[str, str]) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("link", name="Preview a fleet change").click()
    page.get_by_label("Add a consumer").check()
    page.get_by_label("Release (add, move)").fill("tf==2.10")
    page.get_by_role("button", name="Preview").click()
    expect(page).to_have_url(re.compile(r"/ui/preview/[A-Za-z0-9_-]+$"))  # a worker runs it
    summary = page.locator("#preview-summary")
    expect(summary).to_contain_text("model(s) examined", timeout=120_000)  # reloads itself
    expect(summary).to_contain_text("Consumers checked anew: tf-2.10.1")
    vision = page.locator("table.changes tr", has_text="models/vision/7/saved_model.pb")
    expect(vision).to_contain_text("tf-2.10.1: (new) → incompatible ✗ newly fails")
    expect(vision).to_contain_text("DecodeWebP")
    shot(page, "preview")


def test_a_manifest_path_in_the_preview_form_is_refused(
    browser: Browser, stack: tuple[str, str]
) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("link", name="Preview a fleet change").click()
    page.get_by_label("Add a consumer").check()
    page.get_by_label("Release (add, move)").fill("mine=/etc/passwd")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-error")).to_contain_text("not a manifest")


def test_signing_out_ends_the_session(browser: Browser, stack: tuple[str, str]) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/ui/login$"))
    page.goto(stack[0])
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui$"))


def test_the_upgrade_plan_from_the_navigation(browser: Browser, stack: tuple[str, str]) -> None:
    page = signed_in(browser, stack)
    page.get_by_role("link", name="Upgrade plan").click()
    expect(page).to_have_url(re.compile(r"/ui/plan$"))  # a worker computes it; it reloads
    expect(page.locator("#plan-summary")).to_contain_text("model(s) examined", timeout=120_000)
    page.set_viewport_size({"width": 1400, "height": 1300})
    shot(page, "plan")
    legacy = page.locator("#consumer-legacy-edge")
    chosen = legacy.locator("tr.recommended th")
    expect(chosen).to_contain_text("← recommended")
    release = chosen.inner_text().split()[0]
    expect(legacy.locator("p.recommendation")).to_contain_text(f"{release} serves")
    expect(legacy.locator("table.plan-causes").first).to_contain_text("Fix")
    expect(legacy.locator("p.advice")).to_contain_text(f"upgrade to {release}")
    producers = page.get_by_role("heading", name="Producers: the newest release to export with")
    expect(producers).to_be_visible()
