"""``wikimem lint``: a rule-based health check for the wiki (see docs/rules/ for every rule).

    from wikimem.api import open_vault
    report = open_vault("vault").lint(select=["WM1"])
    for f in report.findings:
        print(f.path, f.line, f.code, f.message)
"""
from .registry import RULES, SEVERITIES, Finding, Fix, Rule, all_rules, rule
from .runner import LintReport, lint, locate

__all__ = ["RULES", "SEVERITIES", "Finding", "Fix", "Rule", "LintReport", "all_rules", "lint", "locate", "rule"]
