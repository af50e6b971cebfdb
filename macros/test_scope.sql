{% macro cdc_tests_check_all_history() %}
    {#-
        True when data tests check the whole history: var cdc_test_scope is 'all', or the
        invocation runs with --full-refresh. Otherwise ('run', the default) the invariant tests
        check what the last run changed (cdc_touched_keys_predicate, cdc_new_changes_predicate).
    -#}
    {%- set scope = var('cdc_test_scope', 'run') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error(
            "var cdc_test_scope is '" ~ scope ~ "': use 'run' (what the last run changed) or 'all' (the whole history)."
        ) }}
    {%- endif -%}
    {{ return(scope == 'all' or flags.FULL_REFRESH) }}
{% endmacro %}


{% macro cdc_model_relation(model_name) %}
    {#-
        The relation of a model of this project by name, looked up in the graph (not ref(), so a
        test may read a model it does not depend on). None when it does not exist yet, and in
        a dbt unit test (whose context has no graph: its inputs are the mocked rows).
    -#}
    {%- if graph.nodes is not defined -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.name == model_name -%}
            {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{% macro cdc_partition_values(relation) %}
    {#-
        The values of a relation's single partition column, sorted ascending, from the
        metastore (SHOW PARTITIONS: no file is read). Empty when the relation is none or
        unpartitioned data is missing.
    -#}
    {%- if relation is none -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set values = [] -%}
    {%- for row in run_query('show partitions ' ~ relation).rows -%}
        {%- do values.append(row[0].split('=', 1)[1]) -%}
    {%- endfor -%}
    {{ return(values | sort) }}
{% endmacro %}


{% macro cdc_scope_predicate(model_name, predicate, generation_index=-1, when_missing='false') %}
    {#-
        `predicate` (SQL text) with `{relation}` replaced by the model's relation and
        `{generation}` by one of its partition values (generation_index: -1 the newest, -2 the
        one before). 'true' when tests check all history (cdc_tests_check_all_history) and at
        parse time; `when_missing` when the model has fewer partitions than that; 'true' for
        the newest when it is the only one (the first run, a full refresh: every row is the
        last run's, and the test reads no subquery to find that out).
    -#}
    {%- if not execute or cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set relation = cdc_model_relation(model_name) -%}
    {%- set generations = cdc_partition_values(relation) -%}
    {%- if generations | length < -generation_index -%}
        {{ return(when_missing) }}
    {%- endif -%}
    {%- if generations | length == 1 and generation_index == -1 -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(predicate | replace('{relation}', relation | string) | replace('{generation}', generations[generation_index])) }}
{% endmacro %}


{% macro cdc_touched_keys_predicate(prefix='') %}
    {#-
        SQL predicate on (feed, source_schema, source_table, primary_key): the key's versions were
        written by the last run that applied changes (the newest history_generation partition of
        int_history_versions: the keys with new changes, and every key of a table the run reset).
        'true' when tests check all history (cdc_tests_check_all_history); 'false' before any
        run applied a change. `prefix` qualifies the columns, e.g. 'history.'.
    -#}
    {{ return(cdc_scope_predicate('int_history_versions',
        '(' ~ prefix ~ 'feed, ' ~ prefix ~ 'source_schema, ' ~ prefix ~ 'source_table, ' ~ prefix ~ 'primary_key) in ('
        ~ 'select touched.feed, touched.source_schema, touched.source_table, touched.primary_key'
        ~ " from {relation} as touched where touched.history_generation = '{generation}')")) }}
{% endmacro %}


{% macro cdc_touched_versions_predicate(prefix='') %}
    {#-
        SQL predicate on version_id: the version was written by the last run that applied
        changes (the newest history_generation partition of int_history_versions). 'true' when
        tests check all history; 'false' before any run applied a change.
    -#}
    {{ return(cdc_scope_predicate('int_history_versions',
        prefix ~ "version_id in (select touched.version_id from {relation} as touched"
        ~ " where touched.history_generation = '{generation}')")) }}
{% endmacro %}


{% macro cdc_new_changes_predicate(prefix='') %}
    {#-
        SQL predicate on change_id: the change was appended to change_log by the last run that
        appended any (its newest applied_generation partition). 'true' when tests check all
        history; 'false' before any change was applied.
    -#}
    {{ return(cdc_scope_predicate('change_log',
        prefix ~ "change_id in (select new_changes.change_id from {relation} as new_changes"
        ~ " where new_changes.applied_generation = '{generation}')")) }}
{% endmacro %}


{% macro cdc_last_generation_predicate(prefix='') %}
    {#-
        SQL predicate on applied_generation: the row was appended to change_log by the last run
        that appended any (a partition filter). 'true' when tests check all history; 'false'
        before any change was applied.
    -#}
    {{ return(cdc_scope_predicate('change_log', prefix ~ "applied_generation = '{generation}'")) }}
{% endmacro %}


{% macro cdc_new_batches_predicate(prefix='') %}
    {#-
        SQL predicate on ingest_batch_id: the batch was committed after the run before the last
        one started (batch ids and generations are both UTC start times, YYYYMMDDTHHMMSSffffff),
        so every batch the last run staged, and any staged since, is in scope. 'true' when tests
        check all history or change_log has fewer than two generations.
    -#}
    {{ return(cdc_scope_predicate(
        'change_log', prefix ~ "ingest_batch_id > '{generation}'", generation_index=-2, when_missing='true'
    )) }}
{% endmacro %}


{% macro spark__get_where_subquery(relation) %}
    {#-
        dbt's `where` test config, with placeholders that scope a generic test to what the last
        run changed (cdc_tests_check_all_history turns the predicates into 'true'):
        `__cdc_touched_keys__` (cdc_touched_keys_predicate), `__cdc_touched_versions__`
        (cdc_touched_versions_predicate), `__cdc_new_changes__` (cdc_new_changes_predicate),
        `__cdc_last_generation__` (cdc_last_generation_predicate), `__cdc_new_batches__`
        (cdc_new_batches_predicate), and
        `__cdc_this__`, the tested relation (for a subquery on the same relation). The
        documented way to extend `where` (dbt docs, "where").
    -#}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- if '__cdc_touched_keys__' in where -%}
            {%- set where = where | replace('__cdc_touched_keys__', cdc_touched_keys_predicate()) -%}
        {%- endif -%}
        {%- if '__cdc_new_changes__' in where -%}
            {%- set where = where | replace('__cdc_new_changes__', cdc_new_changes_predicate()) -%}
        {%- endif -%}
        {%- if '__cdc_touched_versions__' in where -%}
            {%- set where = where | replace('__cdc_touched_versions__', cdc_touched_versions_predicate()) -%}
        {%- endif -%}
        {%- if '__cdc_last_generation__' in where -%}
            {%- set where = where | replace('__cdc_last_generation__', cdc_last_generation_predicate()) -%}
        {%- endif -%}
        {%- if '__cdc_new_batches__' in where -%}
            {%- set where = where | replace('__cdc_new_batches__', cdc_new_batches_predicate()) -%}
        {%- endif -%}
        {%- set where = where | replace('__cdc_this__', relation | string) -%}
        {%- set filtered -%}
            (select * from {{ relation }} where {{ where }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- endif -%}
    {{ return(relation) }}
{% endmacro %}
