"""Click glue only: parse options, call the core, render, exit with the policy's code."""
