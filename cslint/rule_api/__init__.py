"""The rule interface's data: what a rule is given (`RuleContext`) and what it returns (`Finding`, `Fix`).

Below the fixers and the rules, which both use them.
"""
