"""A competition made from one labelled table: read it (`files`), propose how to grade it and check the
user's choices (`proposal`), split it into a bundle (`bundle`), store the draft and the competition
(`services`), and the pages of that flow (`views`)."""
