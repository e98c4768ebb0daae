"""What the dashboard reads and shows, computed headless (no Streamlit here): one module per page's concern
(catalog, boards, correlation_tables, responses, head_to_head, ratings, audits, trust_tables, intake), number
formatting (formatting), each view's cache scope (scope), view state <-> URL (share), who may write through a
shared dashboard (access) and the annotators' side of rating tasks (annotation). The page scripts in pages/views/
call these and draw."""
