"""The upload form: one .zip, or the bundle's files picked together."""

from django import forms


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)] if data else []


class UploadForm(forms.Form):
    files = MultipleFileField(
        widget=MultipleFileInput(attrs={"accept": ".zip,.csv,.yaml,.yml,.md"}),
        help_text="A .zip bundle, or competition.yaml, description.md, train.csv, test.csv, "
        "sample_submission.csv and answers.csv together.",
    )
    is_public = forms.BooleanField(required=False, label="Public (everyone can see it and run agents on it)")


class SubmissionForm(forms.Form):
    """One submission.csv to grade (webapp.competitions.submissions checks its size and the rate limit)."""

    file = forms.FileField(
        label="submission.csv",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
        help_text="The id column and the target columns, one row per id of test.csv.",
    )
