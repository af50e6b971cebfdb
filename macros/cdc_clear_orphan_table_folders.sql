{% macro cdc_clear_orphan_table_folders() %}
    {#-
        Remove the folder a killed CREATE TABLE AS SELECT left behind (ADR 0006). Spark writes a
        managed table's files before it enters the table in the catalog, and refuses to create a
        managed table over a non-empty folder (LOCATION_ALREADY_EXISTS; the legacy setting
        spark.sql.legacy.allowNonEmptyLocationInCTAS covers an explicit LOCATION only). So a run
        killed while it wrote a table (dbt drops the old table first) left a folder that made
        every later run fail on that table. For each table, incremental model and seed of the
        project that is not in the catalog (dbt's relation cache, no query) and whose folder
        exists, a throw-away managed table is pointed at that folder and dropped, which deletes
        the folder. Which folders exist: CDC_WAREHOUSE_FOLDERS, the `<schema>.<table>` folders
        under the warehouse that `cdc run` lists before dbt starts; without it (a plain
        `dbt build`), every missing table's folder is cleared, whether it exists or not (five
        statements each, logged to dbt's log file only). Called from on-run-start; renders no
        statement (dbt runs none for an empty hook).
    -#}
    {%- if execute -%}
        {%- set listed = env_var('CDC_WAREHOUSE_FOLDERS', '*') -%}
        {%- set folders = none if listed == '*' else (listed.split(',') if listed else []) -%}
        {%- set orphans = [] -%}
        {%- for node in graph.nodes.values()
            if node.resource_type in ['model', 'seed']
            and node.config.enabled
            and node.config.materialized in ['table', 'incremental', 'seed'] -%}
            {%- set identifier = node.alias or node.name -%}
            {%- if (folders is none or (node.schema ~ '.' ~ identifier) | lower in folders)
                and adapter.get_relation(database=node.database, schema=node.schema, identifier=identifier) is none -%}
                {%- do orphans.append((node.schema, identifier)) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- for schema, identifier in orphans -%}
            {%- set location = [] -%}
            {%- for row in run_query('describe schema extended ' ~ schema).rows
                if row[0] == 'Location' -%}
                {%- do location.append(row[1]) -%}
            {%- endfor -%}
            {%- set location = location[0] -%}
            {%- set throwaway = schema ~ '.cdc_orphan_folder' -%}
            {%- do run_query('drop table if exists ' ~ throwaway) -%}
            {%- do run_query('create table ' ~ throwaway ~ ' (orphan int) using parquet') -%}
            {%- do run_query('alter table ' ~ throwaway ~ " set location '" ~ location ~ '/' ~ identifier | lower ~ "'") -%}
            {%- do run_query('drop table ' ~ throwaway) -%}
            {%- do log(
                'cleared ' ~ location ~ '/' ~ identifier | lower
                ~ ', the folder of a table missing from the catalog (a run killed while it wrote the table leaves one)',
                info=folders is not none
            ) -%}
            {%- if loop.last -%}
                {#- the throw-away table's own (empty) folder goes with a last plain drop -#}
                {%- do run_query('create table ' ~ throwaway ~ ' (orphan int) using parquet') -%}
                {%- do run_query('drop table ' ~ throwaway) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
