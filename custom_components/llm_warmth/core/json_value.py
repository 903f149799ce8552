"""A JSON value, as the actions answer and the store keeps it (typed, not ``Any``)."""

type JsonValue = dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None
