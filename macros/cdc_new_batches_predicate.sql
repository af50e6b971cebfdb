{% macro cdc_new_batches_predicate(prefix='') %}
    {#-
        SQL predicate on ingest_batch_id: the batch was committed after the run before the last
        one started (batch ids and generations are both UTC start times, YYYYMMDDTHHMMSSffffff),
        so every batch the last run staged, and any staged since, is in scope. 'true' when tests
        check all history or change_log's store int_changes_logged has fewer than two generations.
    -#}
    {{ return(cdc_scope_predicate(
        'int_changes_logged', 'applied_generation', prefix ~ 'ingest_batch_id > {generation}', generation_index=-2, when_missing='true'
    )) }}
{% endmacro %}
