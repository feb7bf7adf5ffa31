"""report.html renders in a real browser (Debian's headless Chromium, driven by Selenium):
its table, every plot decoded from the page itself, the figures under each plot, the spec, the
fidelity and the versions. The page must stand alone: it is opened from a copy in a folder of
its own."""
import json
import shutil

import pytest

from dlcp_emu.cli import main
from dlcp_emu.study import report_page

from test_experiments_sim import TINY, _toml

CHROMEDRIVER = "/usr/bin/chromedriver"   # Debian's chromium-driver (scripts/setup.sh --test)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("page")
    spec = tmp / "tiny.toml"
    spec.write_text(_toml(TINY))
    # compare draws the plots and the page itself (no --no-report).
    assert main(["compare", str(spec), "--backend", "sim", "--presets", "fifo,dlcp",
                 "--results", str(tmp / "r")]) == 0
    run_dir = (tmp / "r" / "latest").resolve()
    alone = tmp / "alone"
    alone.mkdir()
    shutil.copy(run_dir / "report.html", alone / "report.html")
    return run_dir, alone / "report.html"


def test_compare_writes_the_plots_their_figures_and_the_page(page):
    run_dir, _ = page
    for name in ("fct_cdf", "iteration_time", "queue_occupancy", "loss_by_magnitude"):
        assert (run_dir / f"{name}.png").stat().st_size > 15_000 and (run_dir / f"{name}.csv").is_file()
    text = (run_dir / "report.html").read_text()
    assert "data:image/png;base64," in text and 'src="' not in text.replace("src='data:", "")
    v = report_page.versions()
    assert v["numpy"] != "not installed" and v["python"].startswith("3.")


@pytest.mark.slow   # a browser: seconds
def test_the_page_renders_its_table_images_and_figures_in_headless_chromium(page):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    run_dir, alone = page
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(alone.as_uri())
        summary = json.loads((run_dir / "summary.json").read_text())
        assert driver.title == f"{summary['spec']}: simulation"
        table = driver.find_element(By.ID, "table").text
        assert "iter mean" in table and "fifo" in table and "dlcp" in table
        images = driver.find_elements(By.TAG_NAME, "img")
        assert len(images) == 4
        for img in images:   # decoded by the browser, at the PNG's own size
            width = driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)
            assert width and width > 500, img.get_attribute("alt")
        # The iteration plot's figures under it: the table's mean, to the 0.1 ms it prints.
        rows = driver.find_elements(By.CSS_SELECTOR, "#iteration_time table tbody tr")
        drawn = {r.find_elements(By.TAG_NAME, "td")[0].text: float(r.find_elements(By.TAG_NAME, "td")[1].text)
                 for r in rows}
        for preset in ("fifo", "dlcp"):
            mean_ms = summary["presets"][preset]["iteration_time_mean_s"] * 1e3
            assert drawn[preset] == pytest.approx(mean_ms, rel=1e-3)
            assert f"{mean_ms:.1f}" in table
        assert "name = " in driver.find_element(By.ID, "spec").text
        headings = [h.text for h in driver.find_elements(By.TAG_NAME, "h2")]
        assert headings == ["Results", "Plots", "Fidelity", "Spec", "Versions"]
    finally:
        driver.quit()
