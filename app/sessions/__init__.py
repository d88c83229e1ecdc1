"""Agent sessions: the live registry, turns that stream updates, and their durable history."""
