{% macro register_raw_tables() %}
    {#-
        Register the staging job's parquet datasets under <lake root>/raw/ as external tables
        in schema var('cdc_raw_schema'), and register the ingest-batch partitions the run
        reads as new, except in the raw tables of formats no feed uses; a raw column added by
        a later release is added to the registered table (ALTER TABLE ADD COLUMNS), the older
        batches reading it as null. Called from on-run-start; returns a no-op statement.

        The new batches are those of the run's working set (cdc_new_batches): one
        ALTER TABLE ADD IF NOT EXISTS PARTITION per table, whose cost does not grow with the
        batches the lake holds (ADR 0033). MSCK REPAIR, which lists every partition folder,
        runs where the working set reads every batch (a first run, a --full-refresh, dbt run
        without `cdc run`) and on a table this hook has just created.
        A batch's partition is added to every raw table in use, so a table with no rows of the
        batch gets an empty folder (readers look for parquet files only).
    -#}
    {% if execute %}
        {% set lake = env_var('CDC_LAKE_ROOT', var('cdc_lake_root')) %}
        {% if not lake.startswith('/') %}
            {% set lake = env_var('PWD', '.') ~ '/' ~ lake %}
        {% endif %}
        {% set raw_schema = var('cdc_raw_schema') %}
        {#- a format no feed uses: its staging model reads nothing (cdc_working_batches) -#}
        {% set used = cdc_feeds().values() | map(attribute='format') | list %}
        {% set unused = [] %}
        {% for format in cdc_format_names() %}
            {% if format not in used %}
                {% do unused.append('raw_' ~ format) %}
            {% endif %}
        {% endfor %}
        {#- the batches the run reads as new, or none when it reads every batch -#}
        {% set new_batches = cdc_new_batches() %}
        {% do run_query('create database if not exists ' ~ raw_schema) %}
        {% set existing = [] %}
        {% for row in run_query('show tables in ' ~ raw_schema).rows %}
            {% do existing.append(row[1] | lower) %}
        {% endfor %}
        {% for table_name in cdc_raw_table_names() %}
            {% set relation = raw_schema ~ '.' ~ table_name %}
            {% do run_query(
                'create table if not exists ' ~ relation
                ~ " using parquet location '" ~ lake ~ '/raw/' ~ table_name ~ "'"
            ) %}
            {% if table_name not in unused %}
                {#- a raw column this release added (the schema partition holds this release's
                    columns, python_udfs/staging.py ensure_tables): added to a table registered
                    before, so the batches staged before read it as null -#}
                {% set registered = [] %}
                {% for row in run_query('describe table ' ~ relation).rows %}
                    {% do registered.append(row[0]) %}
                {% endfor %}
                {% set added = [] %}
                {% for row in run_query(
                    "describe query select * from parquet.`" ~ lake ~ '/raw/' ~ table_name
                    ~ "/ingest_batch_id=00000000T000000000000`"
                ).rows if row[0] not in registered %}
                    {% do added.append('`' ~ row[0] ~ '` ' ~ row[1]) %}
                {% endfor %}
                {% if added %}
                    {% do run_query('alter table ' ~ relation ~ ' add columns (' ~ added | join(', ') ~ ')') %}
                {% endif %}
                {#- MSCK REPAIR and ADD PARTITION refresh the table's cached metadata and file
                    listing themselves (Spark calls catalog.refreshTable): no REFRESH after them -#}
                {% if new_batches is none or table_name | lower not in existing %}
                    {% do run_query('msck repair table ' ~ relation) %}
                {% elif new_batches %}
                    {% set partitions = [] %}
                    {% for batch in new_batches %}
                        {% do partitions.append('partition (ingest_batch_id = ' ~ cdc_string_literal(batch) ~ ')') %}
                    {% endfor %}
                    {% do run_query('alter table ' ~ relation ~ ' add if not exists ' ~ partitions | join(' ')) %}
                {% endif %}
            {% endif %}
        {% endfor %}
    {% endif %}
    select 1 as raw_tables_registered
{% endmacro %}
