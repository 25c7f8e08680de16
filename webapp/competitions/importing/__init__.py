"""Bringing a competition in: a bundle folder checked before anything is stored (`bundles`, with the
formats it can parse in `public_formats` and the words of its refusals in `sentences`), an uploaded .zip
unpacked safely (`archives`), and an MLE-bench competition folder converted into a bundle (`mlebench`)."""
