MARKER_PREFIX = "@@practicum:"
