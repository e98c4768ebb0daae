"""Pairwise judgments: a judge shown two models' responses to one item, twice with the order swapped (FastChat
llm_judge's *_pair.jsonl, `import mtbench`). g1_winner is the verdict with model_1's response shown first,
g2_winner with it shown second, both already mapped back to 'model_1' / 'model_2' (or 'tie', or 'error' when
the judge's answer could not be parsed); two verdicts that disagree show position bias."""

VERSION = 9

SQL = """
CREATE TABLE pairwise_judgments (
    dataset     VARCHAR NOT NULL,
    track       VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    model_1     VARCHAR NOT NULL,
    model_2     VARCHAR NOT NULL,
    judge       VARCHAR NOT NULL,     -- the judge model, e.g. gpt-4
    prompt      VARCHAR NOT NULL,     -- the judge prompt's name, e.g. pair-v2
    g1_winner   VARCHAR NOT NULL CHECK (g1_winner IN ('model_1', 'model_2', 'tie', 'error')),
    g2_winner   VARCHAR NOT NULL CHECK (g2_winner IN ('model_1', 'model_2', 'tie', 'error')),
    origin      VARCHAR,              -- file and line
    PRIMARY KEY (dataset, item_id, model_1, model_2, judge, prompt)
);
"""
