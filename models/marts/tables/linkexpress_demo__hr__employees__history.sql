{{ config(materialized='view') }}
{{ cdc_typed_history("linkexpress_demo", "HR", "EMPLOYEES") }}
