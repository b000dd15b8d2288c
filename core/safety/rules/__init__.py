"""Tier 1 and Tier 2 rules, one module per program family.

The table of which rule judges which program is `core.safety.program_rules.PROGRAM_RULES`; this
package holds the rules themselves and imports nothing, so a rule module (such as `vm_probe`,
which judges in-VM probe lines with the probe rules) can import its siblings without a circle.
"""
