"""A person's moves on the bundled charts (uPlot), for the browser tests: hover a point, read the legend."""

from __future__ import annotations

from typing import Any


def hover_point(driver: Any, chart_id: str, index: int) -> None:
    """Move the mouse over point ``index`` of the chart's first series (where uPlot draws it)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    over = driver.find_element(By.CSS_SELECTOR, f'[data-chart="{chart_id}"] .u-over')
    left, top = driver.execute_script(
        "const u = window.kip714Charts.charts[arguments[0]];"
        "return [u.valToPos(u.data[0][arguments[1]], 'x'), u.valToPos(u.data[1][arguments[1]], 'y')];",
        chart_id,
        index,
    )
    size = over.size
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", over)
    ActionChains(driver).move_to_element_with_offset(
        over, int(left - size["width"] / 2), int(top - size["height"] / 2)
    ).perform()


def legend_values(driver: Any, chart_id: str) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll(`[data-chart='${arguments[0]}'] .u-legend .u-series .u-value`)]"
        ".map(cell => cell.textContent);",
        chart_id,
    )
