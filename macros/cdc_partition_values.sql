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
