{{ config(materialized='view') }}
{{ cdc_typed_history("goldengate_demo", "HR", "EMPLOYEES") }}
