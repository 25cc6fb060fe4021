"""The passes a case can time, and what an implementation key of each ends with: one table for the
kit (which names keys), the aggregate (which finds each pass's baseline) and the report (which keeps
the passes apart). Nothing of ours below it."""

# the forward, the backward alone (its forward, which makes the saved state, runs outside the timed
# region), or both as one call
PASSES = ("forward", "backward", "forward+backward")
BACKWARD_PASSES = PASSES[1:]
# what an implementation key of a pass ends with: keys stay unique within a family across passes
PASS_SUFFIX = {"forward": "", "backward": ".bwd", "forward+backward": ".fwdbwd"}


def pass_key(key: str, pass_: str | None) -> str:
    """``key`` (an implementation kind, or kind@step) in ``pass_`` (None: the forward)."""
    return key + PASS_SUFFIX.get(pass_ or "forward", "")
