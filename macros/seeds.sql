{% macro spark__load_csv_rows(model, agate_table) %}
    {#-
        dbt-spark's seed loader with the values written as SQL literals (cdc_string_literal)
        instead of bound parameters: the session connection of dbt-spark 1.11 pastes a bound
        string between quotes without escaping it, so a catalog name with a quote broke the
        seed. Same statements otherwise: one `insert into ... values` per batch of rows.
    -#}
    {%- set batch_size = get_batch_size() -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(batch_size) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set value = row[loop.index0] -%}
                    {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
                    cast({% if value is none %}null{% elif value is sameas true %}true{% elif value is sameas false %}false{% elif value is number %}{{ value }}{% else %}{{ cdc_string_literal(value) }}{% endif %} as {{ type }})
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {% endfor -%}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}
            {%- do statements.append(sql) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements[0] if statements else '') }}
{% endmacro %}


{% macro cdc_feeds() %}
    {#-
        The feeds in effect, name -> {format, path, options}: var('cdc_feeds'), and while
        var('cdc_demo') is true the demo feeds of var('cdc_demo_feeds') too. The Python side
        (python_udfs/config.py, load_project) merges the same two vars the same way.
    -#}
    {%- set feeds = {} -%}
    {%- if var('cdc_demo', false) -%}
        {%- do feeds.update(var('cdc_demo_feeds', {}) or {}) -%}
    {%- endif -%}
    {%- do feeds.update(var('cdc_feeds', {}) or {}) -%}
    {{ return(feeds) }}
{% endmacro %}



{% macro cdc_format_names() %}
    {#-
        Every feed format this version decodes, in the order of the Python registry
        (python_udfs/registry.py FORMATS; tests/test_registry.py checks that the two agree). Each
        has a staging folder models/staging/<format>/ and a raw table raw_<format>.
    -#}
    {{ return(['qlik_change_tables', 'qlik_kafka', 'goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract']) }}
{% endmacro %}


{% macro cdc_feed_formats() %}
    {#-
        The feed formats the staging models stage, in the order int_changes_unioned unions
        them: those cdc_feeds() configures, or all of cdc_format_names() when it configures none.
    -#}
    {%- set all_formats = cdc_format_names() -%}
    {%- set configured = [] -%}
    {%- for spec in cdc_feeds().values() -%}
        {%- do configured.append(spec.get('format')) -%}
    {%- endfor -%}
    {%- set formats = [] -%}
    {%- for format in all_formats -%}
        {%- if format in configured or not configured -%}
            {%- do formats.append(format) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(formats) }}
{% endmacro %}


{% macro cdc_format_enabled(format) %}
    {#- True when the staging model of feed format `format` is enabled (cdc_feed_formats). -#}
    {{ return(format in cdc_feed_formats()) }}
{% endmacro %}

{% macro cdc_catalog_seeds() %}
    {#-
        The catalog seeds of columns in effect, as relations: cdc_columns (the project's own
        tables), and cdc_demo_columns (seeds/demo/) while var('cdc_demo') is true.
    -#}
    {%- set seeds = [ref('cdc_columns')] -%}
    {%- if var('cdc_demo', false) -%}
        {%- do seeds.append(ref('cdc_demo_columns')) -%}
    {%- endif -%}
    {{ return(seeds) }}
{% endmacro %}
