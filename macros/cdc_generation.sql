{% macro cdc_generation() %}
    {#-
        The generation of this dbt invocation: its start time (UTC) as sortable text
        YYYYMMDDTHHMMSSffffff. change_log rows are stamped with the generation that applied
        them, and the state models remember the last generation they consumed.
    -#}
    {{ return(run_started_at.strftime('%Y%m%dT%H%M%S%f')) }}
{% endmacro %}
