"""Competitions on survey data that statsmodels ships (`statsmodels.datasets.*`, CSVs in the wheel).

marital-affairs (binary, f1), party-identification (7 ordered classes, quadratic weighted kappa),
doctor-visits (counts, spearman).
"""

from __future__ import annotations

import pandas as pd

from webapp.competitions.bundled.sources import statsmodels_frame
from webapp.competitions.bundled.spec import CompetitionSpec

STATSMODELS_NOTE = "Shipped with statsmodels as `statsmodels.datasets.{name}`; no download is involved."


def integers_where_integral(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every float column whose values are all whole numbers cast to int (3.0 -> 3)."""
    whole = [c for c in frame.columns if frame[c].dtype.kind == "f" and (frame[c] % 1 == 0).all()]
    return frame.astype(dict.fromkeys(whole, "int64"))


# -- marital-affairs -------------------------------------------------------------------------------------


def load_affairs() -> pd.DataFrame:
    """6366 married women: 8 survey answers, then `had_affair` (1 when time in affairs > 0)."""
    frame = integers_where_integral(statsmodels_frame("fair"))
    had_affair = (frame.pop("affairs") > 0).astype(int)
    return frame.assign(had_affair=had_affair)


AFFAIRS = CompetitionSpec(
    slug="marital-affairs",
    name="Marital Affairs",
    metric="f1",
    target_columns=("had_affair",),
    load=load_affairs,
    fields={
        "rate_marriage": "How she rates her marriage: 1 very poor, 2 poor, 3 fair, 4 good, 5 very good.",
        "age": "Age in years (interval approximations).",
        "yrs_married": "Years married (interval approximations).",
        "children": "Number of children.",
        "religious": "How religious: 1 not, 2 mildly, 3 fairly, 4 strongly.",
        "educ": (
            "Education: 9 grade school, 12 high school, 14 some college, 16 college graduate, "
            "17 some graduate school, 20 advanced degree."
        ),
        "occupation": (
            "Occupation: 1 student; 2 farming, agriculture, semi-skilled or unskilled worker; "
            "3 white-collar; 4 teacher, counsellor, social worker, nurse, artist, writer, technician or "
            "skilled worker; "
            "5 managerial, administrative or business; 6 professional with an advanced degree."
        ),
        "occupation_husb": "Her husband's occupation, coded like `occupation`.",
        "had_affair": "Target: 1 when she reported any time spent in extramarital affairs, else 0.",
    },
    overview="""
In 1974 *Redbook* magazine surveyed its readers about their marriages. This data holds the answers of
6,366 married women. Predict whether a woman reported having had an **extramarital affair**, from how
she rates her marriage, her age, years married, children, religiousness, education and occupation.

About a third of the women answered yes. The metric is the F1 score of the positive class, so
predicting "no" for everyone scores 0: find the women who did.
""",
    source="""
R. C. Fair, "A Theory of Extramarital Affairs", Journal of Political Economy 86 (1978), 45–61; the
1974 Redbook survey. """
    + STATSMODELS_NOTE.format(name="fair"),
    seed=707,
    stratify=True,
    evaluation_note="`had_affair` holds the predicted label, 0 or 1.",
)


# -- party-identification --------------------------------------------------------------------------------

LEANINGS = "1 extremely liberal … 4 moderate … 7 extremely conservative"


def load_anes() -> pd.DataFrame:
    """944 voters of 1996: 9 answers (without the derived log population), then `PID` (0–6)."""
    frame = integers_where_integral(statsmodels_frame("anes96")).drop(columns="logpopul")
    return frame[[c for c in frame.columns if c != "PID"] + ["PID"]]


PARTY = CompetitionSpec(
    slug="party-identification",
    name="Party Identification, 1996",
    metric="quadratic_weighted_kappa",
    target_columns=("PID",),
    load=load_anes,
    fields={
        "popul": "Population of the respondent's census place, in thousands.",
        "TVnews": "Number of times per week the respondent watches TV news.",
        "selfLR": f"The respondent's own political leaning, {LEANINGS}.",
        "ClinLR": f"How the respondent sees Bill Clinton's leaning, {LEANINGS}.",
        "DoleLR": f"How the respondent sees Bob Dole's leaning, {LEANINGS}.",
        "age": "Age in years.",
        "educ": (
            "Education: 1 grades 1–8, 2 some high school, 3 high school graduate, 4 some college, "
            "5 college degree, 6 master's degree, 7 PhD."
        ),
        "income": "Household income bracket, from 1 (under $3,000) to 24 ($105,000 and over).",
        "vote": "Expected vote: 0 Clinton, 1 Dole.",
        "PID": (
            "Target: party identification, 0 strong Democrat, 1 weak Democrat, 2 independent-Democrat, "
            "3 independent, 4 independent-Republican, 5 weak Republican, 6 strong Republican."
        ),
    },
    overview="""
The 1996 American National Election Study asked voters about themselves, their news habits, their
politics and how they saw the two presidential candidates. Predict each respondent's **party
identification** on the seven-point scale from strong Democrat (0) to strong Republican (6).

The classes are ordered: calling a strong Democrat a weak Democrat is a small mistake, calling them a
strong Republican a big one, and the metric (quadratic weighted kappa) scores it that way.
""",
    source="""
The American National Election Studies, 1996 (https://electionstudies.org/), public domain; the subset
prepared for statsmodels. """
    + STATSMODELS_NOTE.format(name="anes96"),
    seed=808,
    stratify=True,
    evaluation_note="`PID` holds the predicted party identification, an integer from 0 to 6.",
)


# -- doctor-visits ---------------------------------------------------------------------------------------


def load_randhie() -> pd.DataFrame:
    """20190 person-years of the RAND experiment: 9 plan and health variables, then `mdvis`."""
    frame = statsmodels_frame("randhie")
    return frame[[c for c in frame.columns if c != "mdvis"] + ["mdvis"]]


DOCTOR_VISITS = CompetitionSpec(
    slug="doctor-visits",
    name="Doctor Visits in the RAND Health Insurance Experiment",
    metric="spearman",
    target_columns=("mdvis",),
    load=load_randhie,
    fields={
        "lncoins": "ln(coinsurance + 1), where the coinsurance rate is between 0 and 100 (%).",
        "idp": "1 when the plan has an individual deductible, else 0.",
        "lpi": "ln(max(1, annual participation incentive payment)).",
        "fmde": "0 when idp = 1, else ln(max(1, MDE / (0.01 × coinsurance))), MDE the maximum expenditure.",
        "physlm": "1 when the person has a physical limitation, else 0.",
        "disea": "Number of chronic diseases.",
        "hlthg": "1 when self-rated health is good, else 0.",
        "hlthf": "1 when self-rated health is fair, else 0.",
        "hlthp": "1 when self-rated health is poor, else 0 (excellent health is when all three are 0).",
        "mdvis": "Target: number of outpatient visits to a doctor (MD) in the year.",
    },
    overview="""
From 1974 to 1982 the RAND Health Insurance Experiment assigned families at random to health plans
that made them pay different shares of their medical bills. Each row is one person-year. Predict the
**number of outpatient doctor visits** from the plan's cost sharing and the person's health.

Most people see a doctor a few times a year and some very often; the metric is Spearman's rank
correlation, so what counts is ordering people from fewest to most visits.
""",
    source="""
RAND Health Insurance Experiment; the extract used by A. C. Cameron and P. K. Trivedi,
*Microeconometrics: Methods and Applications*, Cambridge University Press (2005). """
    + STATSMODELS_NOTE.format(name="randhie"),
    seed=909,
    evaluation_note="`mdvis` holds any real-valued prediction; only its ranking across ids matters.",
)

SPECS = (AFFAIRS, PARTY, DOCTOR_VISITS)
