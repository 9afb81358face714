"""Usage and budgets (design §25): model tokens counted as providers report them, limits held
before a run starts."""
