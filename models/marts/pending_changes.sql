{#-
    Changes of transactions whose end has not arrived yet, for readers; a later run applies
    them. A view of int_changes_pending, which each run rewrites and the next run's working set
    reads (issue 45: no int model reads a mart).
-#}

select * from {{ ref('int_changes_pending') }}
