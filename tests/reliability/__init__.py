"""The fault suite of issue 7: tasks you paid for are never lost, and the figures that prove it."""
