"""`deploy` as a library session: session.prepare(request) -> plan, session.run(plan) -> outcome in the report."""
