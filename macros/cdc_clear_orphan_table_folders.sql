{% macro cdc_clear_orphan_table_folders() %}
    {#- Clears table folders a killed CREATE TABLE AS SELECT left (macros/_macros.yml). -#}
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
