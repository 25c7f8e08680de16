"""A large .zip uploaded in a real browser: it goes up in parts with a progress bar that reaches 100%, the
competition page opens, and a bundle the server refuses shows its reason on the page.
"""

from __future__ import annotations

import os
import zipfile

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

USERNAME, PASSWORD = "uma", "uma-browser-password-7"
DATA_MB = 40  # five parts of 8 MB
RECORD_PROGRESS = """() => {
  const bar = document.getElementById("upload-progress");
  sessionStorage.setItem("progress", "[]");
  new MutationObserver(() => {
    const seen = JSON.parse(sessionStorage.getItem("progress"));
    sessionStorage.setItem("progress", JSON.stringify([...seen, bar.value]));
  }).observe(bar, {attributes: true, attributeFilter: ["value"]});
}"""


@pytest.fixture
def uma(django_user_model):
    """Made before the browser starts: playwright's event loop in this thread forbids ORM calls after."""
    return django_user_model.objects.create_user(USERNAME, password=PASSWORD)


def big_bundle_zip(bundle_zip, extra: dict[str, str] | None = None):
    """The tiny churn bundle plus DATA_MB of incompressible public images (and `extra` files), stored."""
    with zipfile.ZipFile(bundle_zip, "a") as archive:
        for i in range(4):
            archive.writestr(f"public/images/{i}.png", os.urandom(DATA_MB // 4 * 1024 * 1024))
        for name, content in (extra or {}).items():
            archive.writestr(name, content)
    return bundle_zip


def sign_in_and_open_upload(page, log_in) -> None:
    log_in(page, USERNAME, PASSWORD)
    page.goto("/competitions/upload/")


def test_a_large_zip_uploads_with_a_progress_bar_to_100_and_opens_the_competition(
    uma, page, bundle_zip, screenshot, log_in
):
    zip_path = big_bundle_zip(bundle_zip)
    sign_in_and_open_upload(page, log_in)
    page.evaluate(RECORD_PROGRESS)
    page.set_input_files("#id_files", str(zip_path))
    page.click("#upload-submit")
    page.wait_for_function(
        "location.pathname.endsWith('/tiny-churn/') || !document.getElementById('upload-errors').hidden"
    )
    assert page.url.endswith("/competitions/tiny-churn/"), page.text_content("#upload-errors")
    assert page.locator("h1").first.text_content().strip() == "Tiny Churn"
    seen = page.evaluate("JSON.parse(sessionStorage.getItem('progress'))")
    assert seen[-1] == 100 and any(0 < value < 100 for value in seen), seen
    assert seen == sorted(seen), "the bar only moves forward"
    page.goto("/competitions/tiny-churn/?folder=images")  # the page lists a folder's files in the folder
    assert "3.png" in page.text_content("#data")
    screenshot("large-upload-done")


def test_a_refused_upload_shows_the_reason_on_the_page(uma, page, bundle_zip, screenshot, log_in):
    zip_path = big_bundle_zip(bundle_zip, {"public/meta/labels.json": '[{"id": 1}, {"id": 2}'})
    sign_in_and_open_upload(page, log_in)
    page.set_input_files("#id_files", str(zip_path))
    page.click("#upload-submit")
    errors = page.locator("#upload-errors")
    errors.wait_for(state="visible")
    assert errors.text_content().startswith("public/meta/labels.json: not valid JSON")
    assert page.locator("#upload-submit").is_enabled(), "the user can pick another file and try again"
    assert page.url.endswith("/competitions/upload/")
    screenshot("large-upload-refused")
