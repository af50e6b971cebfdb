{#-
    The change log of every feed, for readers: the changes of complete transactions, one row
    each (DESIGN.md §5, §6.1). A view of int_changes_logged, the incremental store that each
    run appends to and that the apply chain reads (issue 45: no int model reads a mart).
-#}

{{ config(materialized='view') }}

select * from {{ ref('int_changes_logged') }}
