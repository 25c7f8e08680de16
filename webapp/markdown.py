"""Markdown → sanitised HTML for user-supplied text (competition descriptions)."""

import markdown as md
import nh3

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "img", "sup", "sub", "del",
}  # fmt: skip


def render_markdown(text: str) -> str:
    """HTML safe to embed: no scripts, no event handlers, no javascript: links."""
    html = md.markdown(text, extensions=["fenced_code", "tables"])
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "img": {"src", "alt"}, "th": {"align"}, "td": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
