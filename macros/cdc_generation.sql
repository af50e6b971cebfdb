{% macro cdc_generation() %}
    {#- The generation of this dbt invocation (macros/_macros.yml). -#}
    {{ return(run_started_at.strftime('%Y%m%dT%H%M%S%f')) }}
{% endmacro %}
