{% macro cdc_catalog_column_types(feed, source_schema, source_table) %}
    {#-
        The catalog's columns of one table as rows (column_name, spark_type) in ordinal order
        (the seeds of cdc_catalog_seeds). Raises a compiler error naming the seed when it has
        none. Empty at parse time.
    -#}
    {%- set columns = [] -%}
    {%- set seeds = cdc_catalog_seeds() -%}
    {%- if execute and load_relation(seeds[0]) is not none -%}
        {%- set query -%}
            select column_name, spark_type
            from (
                {%- for seed in seeds %}
                select * from {{ seed }}
                {%- if not loop.last %} union all{% endif %}
                {%- endfor %}
            )
            where
                feed = {{ cdc_string_literal(feed) }}
                and source_schema = {{ cdc_string_literal(source_schema) }}
                and source_table = {{ cdc_string_literal(source_table) }}
            order by ordinal
        {%- endset -%}
        {%- set columns = run_query(query).rows -%}
        {%- if columns | length == 0 -%}
            {{ exceptions.raise_compiler_error(
                "the catalog seeds (seeds/cdc_columns.csv; seeds/demo/ while the demo is on) have no columns for " ~ feed ~ " " ~ source_schema ~ "." ~ source_table
                ~ ": add them (or run `cdc scaffold`) or delete this model file."
            ) }}
        {%- endif -%}
    {%- endif -%}
    {{ return(columns) }}
{% endmacro %}
