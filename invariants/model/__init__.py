"""Plain data every layer shares: findings, the rule table, event records, JSON values, inert text."""
